// Clients
