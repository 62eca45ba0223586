                local g = getmetatable(_G)
                g.__index = {}
            