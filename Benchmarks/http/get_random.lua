-- GET one Task by a random primary key in 1..N (N from the environment, default 100000).
local n = tonumber(os.getenv("TASKS") or "100000")
math.randomseed(os.time() + tonumber(tostring({}):sub(8), 16))
request = function()
  return wrk.format("GET", "/v1/objects/Task/" .. math.random(1, n))
end
