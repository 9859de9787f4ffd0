// Preloaded into the fauxqs emulator (node --require): it listens on every interface by
// default; the local stack keeps it on loopback.
const net = require("net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (args[0] && typeof args[0] === "object" && (args[0].host === "0.0.0.0" || args[0].host === "::")) {
    args[0] = { ...args[0], host: "127.0.0.1" };
  }
  return listen.apply(this, args);
};
