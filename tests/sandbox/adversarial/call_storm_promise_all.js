// attack: Promise.all of more calls than allowed
// phase: producer
// expect: limit_exceeded:host_calls
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    const ps = [];
    for (let i = 0; i < 500; i++) { try { ps.push(ctx.gmail.search({i})); } catch (e) {} }
    return (await Promise.all(ps)).length;
  } } },
});
