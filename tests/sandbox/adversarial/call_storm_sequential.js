// attack: endless awaited ctx calls
// phase: producer
// expect: limit_exceeded:host_calls
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    for (;;) await ctx.gmail.search({});
  } } },
});
