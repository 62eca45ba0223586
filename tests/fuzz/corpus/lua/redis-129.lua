                redis.call('get','x')
                return 1
            