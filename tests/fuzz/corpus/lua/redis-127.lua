#!lua flags=allow-oom
                redis.call('set','x',1)
                return 1
            