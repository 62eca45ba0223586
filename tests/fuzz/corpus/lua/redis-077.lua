                  redis.sha1hex()
            