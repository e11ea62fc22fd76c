// attack: lone surrogate and NUL in arguments cross intact
// phase: producer
// expect: completed:["\ud800","a\u0000b"]
// host-calls: 1
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    const r = await ctx.gmail.search({ s: '\uD800', z: 'a\u0000b' });
    return [r.with.s, r.with.z];
  } } },
});
