// attack: a lone surrogate in arguments is refused at the call, NUL crosses intact
// phase: producer
// expect: logic_error:`argument.s` holds a lone UTF-16 surrogate
// host-calls: 1
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    const ok = await ctx.gmail.search({ z: 'a\u0000b' });
    if (ok.with.z !== 'a\u0000b') throw new Error('NUL lost');
    const r = await ctx.gmail.search({ s: '\uD800', z: 'a\u0000b' });
    return [r.with.s, r.with.z];
  } } },
});
