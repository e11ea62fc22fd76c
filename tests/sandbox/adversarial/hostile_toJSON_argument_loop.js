// attack: toJSON that spins inside the stub
// phase: producer
// expect: limit_exceeded:cpu_time
// host-calls: 0
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    return await ctx.gmail.search({ toJSON() { for (;;) {} } });
  } } },
});
