                        redis.replicate_commands()
                        return math.random()*100000;
                    