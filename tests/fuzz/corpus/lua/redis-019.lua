            local foo = redis.pcall('set',KEYS[1],'myval')
            return {type(foo),foo['ok']}
        