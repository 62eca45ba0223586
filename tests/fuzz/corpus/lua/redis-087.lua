            return redis.acl_check_cmd('invalid-cmd','arg')
        