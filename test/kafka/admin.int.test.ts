import { describe, expect, it } from 'vitest';
import { createTopics, testKafka, uniqueName, withAdmin } from '../helpers/kafka.ts';

describe('createTopics', () => {
  it('creates many topics at once and returns only when every partition of each has a leader', async () => {
    const kafka = testKafka();
    const topics = Array.from({ length: 8 }, () => ({ topic: uniqueName('admin-create'), partitions: 12 }));
    const created = await Promise.all(topics.map((t) => createTopics(kafka, [t])));
    expect(created.flat().sort()).toEqual(topics.map((t) => t.topic).sort());
    const metadata = await withAdmin(kafka, (admin) => admin.fetchTopicMetadata({ topics: topics.map((t) => t.topic) }));
    for (const topic of metadata.topics) {
      expect(topic.partitions).toHaveLength(12);
      expect(topic.partitions.every((p) => p.leader >= 0)).toBe(true);
    }
    expect(await createTopics(kafka, topics)).toEqual([]);
  });
});
