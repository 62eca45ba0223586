            local foo = redis.pcall('get',KEYS[1])
            return {type(foo),foo}
        