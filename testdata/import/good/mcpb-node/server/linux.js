// the linux server
