// a server
