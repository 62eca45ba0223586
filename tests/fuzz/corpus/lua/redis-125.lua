                return redis.call('get','x')
            