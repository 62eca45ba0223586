                        return math.random()*100000;
                    