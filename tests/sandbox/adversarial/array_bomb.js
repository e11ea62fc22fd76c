// attack: arrays of arrays until memory runs out
// phase: producer
// expect: limit_exceeded:memory
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    const a = [];
    for (;;) a.push([1, 2, 3, 4]);
  } } },
});
