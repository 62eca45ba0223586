                local f = function() return 1 end
                getfenv(f)
                return 0
            