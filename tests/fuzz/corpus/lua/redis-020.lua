            local foo = redis.pcall('incr',KEYS[1])
            return {type(foo),foo['err']}
        