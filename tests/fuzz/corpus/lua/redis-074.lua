            redis.call("set", "key", "12039611435714932082")
            return redis.call("get", "key")
        