#!lua flags=allow-stale,no-writes
                return redis.call('echo','foobar')
            