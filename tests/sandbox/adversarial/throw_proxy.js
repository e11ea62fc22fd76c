// attack: throw a Proxy whose traps spin
// phase: producer
// expect: limit_exceeded:cpu_time
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    throw new Proxy({}, { get() { for (;;) {} } });
  } } },
});
