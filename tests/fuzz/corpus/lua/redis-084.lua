            return redis.acl_check_cmd('set','xx',1)
        