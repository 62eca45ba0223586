                bit.lshift = function() return 1 end
            