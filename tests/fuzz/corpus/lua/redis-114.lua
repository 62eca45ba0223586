                    redis.set_repl(12345);
                