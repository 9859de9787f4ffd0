// Replaced by the actors as they land.
