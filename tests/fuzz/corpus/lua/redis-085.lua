            return redis.acl_check_cmd('hset','xx','f',1)
        