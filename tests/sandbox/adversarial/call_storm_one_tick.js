// attack: 100k ctx calls queued in one tick, errors caught
// phase: producer
// expect: limit_exceeded:host_calls|cpu_time
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    for (let i = 0; i < 100000; i++) { try { ctx.gmail.search({i}); } catch (e) {} }
    return 1;
  } } },
});
