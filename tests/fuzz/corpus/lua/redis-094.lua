                cjson.encode = function() return 1 end
            