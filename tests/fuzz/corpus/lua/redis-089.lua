                setmetatable(_G, {})
            