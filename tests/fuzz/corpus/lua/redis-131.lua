#!lua flags=no-writes
                    return redis.call('get','x')
                