                return redis.call("ping", "asdf")
            