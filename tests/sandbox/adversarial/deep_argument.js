// attack: argument nested deeper than the limit
// phase: producer
// expect: limit_exceeded:value_depth
// host-calls: 0
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    let v = 0;
    for (let i = 0; i < 200; i++) v = {v};
    return await ctx.gmail.search(v);
  } } },
});
