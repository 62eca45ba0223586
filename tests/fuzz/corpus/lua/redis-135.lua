#!lua
                return redis.call('get','x')
            