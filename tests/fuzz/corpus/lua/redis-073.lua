              local value = 9007199254740991
              redis.call("set","foo",value)
              return redis.call("get","foo")
        