#!lua flags=allow-stale,no-writes
                return redis.call('get','x')
            