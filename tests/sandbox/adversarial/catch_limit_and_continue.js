// attack: catching the host-call limit error and finishing normally
// phase: producer
// expect: limit_exceeded:host_calls
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    for (let i = 0; i < 100; i++) { try { await ctx.gmail.search({i}); } catch (e) { break; } }
    return 'finished';
  } } },
});
