             redis.call("DEL", "key")
             return redis.call("EXISTS", "key")
        