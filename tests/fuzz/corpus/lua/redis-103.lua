                local f = function() return 1 end
                setfenv(f, {})
                return 0
            