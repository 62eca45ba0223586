#!lua flags=no-writes
                redis.call('set','x',1)
                return 1
            