                cmsgpack.pack = function() return 1 end
            