            local s = string.rep("a", 1024 * 1024 * 1024)
            return #cjson.encode(s..s..s)
        