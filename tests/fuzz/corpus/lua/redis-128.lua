#!lua flags=no-writes
                redis.call('get','x')
                return 1
            