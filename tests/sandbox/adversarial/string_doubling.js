// attack: s += s
// phase: producer
// expect: limit_exceeded:memory
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    let s = 'x';
    for (;;) s += s;
  } } },
});
