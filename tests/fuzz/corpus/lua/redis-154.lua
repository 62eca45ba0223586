                local x={}
                return redis.call("ping", x)
            