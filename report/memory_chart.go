package report

// RedisModelSeriesName labels the Redis bars of a scenario's memory chart: the store's
// model calibrated on Redis 7.0.15, for one client at the policy's limit (rlsim memory
// --redis measures a live server instead).
const RedisModelSeriesName = "Redis (model, a client at its limit)"
