            return redis.acl_check_cmd('set','yy',1)
        