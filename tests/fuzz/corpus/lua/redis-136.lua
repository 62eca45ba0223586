                return redis.call('set','x', 1)
            