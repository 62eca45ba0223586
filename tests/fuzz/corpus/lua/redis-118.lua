                redis.call('set','time',redis.call('time')[1])
            