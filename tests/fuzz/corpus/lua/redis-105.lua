                getmetatable(newproxy(true)).__gc = function() return 1 end
                return 0
            