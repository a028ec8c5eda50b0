// the server
