// attack: argument larger than the limit
// phase: producer
// expect: limit_exceeded:value_size
// host-calls: 0
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    return await ctx.gmail.search({q: 'x'.repeat(200000)});
  } } },
});
