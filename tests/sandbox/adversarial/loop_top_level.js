// attack: infinite loop at module top level
// phase: producer
// expect: limit_exceeded:cpu_time
while (true) {}
export default Keep.workflow({ producers: { h: async () => 1 } });
